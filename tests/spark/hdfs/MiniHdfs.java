import java.io.File;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/** An HDFS for tests/spark/test_spark_hdfs.py: Hadoop's MiniDFSCluster (a namenode and one
 *  datanode in this JVM) on 127.0.0.1, its storage under args[0]. Prints "namenode <port>" when
 *  it serves, and stops when its standard input closes (the test ends, or the test process
 *  dies), so that no JVM outlives the tests. */
public final class MiniHdfs {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(args[0]).getAbsolutePath());
        conf.setBoolean("dfs.permissions.enabled", false);
        // one datanode: a block has one replica, and a write needs no second one
        conf.setInt("dfs.replication", 1);
        conf.set("dfs.client.block.write.replace-datanode-on-failure.enable", "false");
        // small blocks: a segment spans several, so ranged reads cross block boundaries
        conf.setLong("dfs.blocksize", 1024 * 1024);
        conf.setLong("dfs.namenode.fs-limits.min-block-size", 4096);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).format(true).build();
        cluster.waitActive();
        System.out.println("namenode " + cluster.getNameNodePort());
        System.out.flush();
        while (System.in.read() >= 0) {
            // wait for the end of the input
        }
        cluster.shutdown();
        System.exit(0);
    }
}
